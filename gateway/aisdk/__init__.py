"""The Vercel AI SDK's UI message stream protocol (npm `ai` 7, `useChat`): its chunks and its chat request."""
