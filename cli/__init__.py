"""The command-line client of Durable ReAct: `python client.py --help`.

Run commands live in `cli.commands`, session commands in `cli.session_commands`
(registered on the same app, with the `schedule` commands of `cli.schedule_commands`);
the whole app is `cli.session_commands.app`. Pure rendering is in `cli.render` and
`cli.render_session` (unit-tested).

This package imports nothing itself: `scripts/demo.sh`'s model check (`cli.demo`) and the rendering
modules load without the commands' imports.
"""
