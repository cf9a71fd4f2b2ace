"""Command-line client: run, follow, steer and inspect ReAct agents (see `python client.py --help`)."""

from cli import app

if __name__ == "__main__":
    app()
