"""The Vercel AI SDK's UI message stream (npm `ai` 7, `useChat`): its chunks, chat request and routes."""

from gateway.aisdk.routes import routes

__all__ = ["routes"]
