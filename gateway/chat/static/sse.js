// Server-sent events over fetch: a POST can stream (EventSource cannot), and headers
// (Authorization, Last-Event-ID) can be set. Yields {id, event, data} per event.

export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = { id: null, event: "message", data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        if (end === buffer.length - 1 && buffer[end] === "\r") break; // "\r\n" split across reads
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (event.data.length) yield { id: event.id, event: event.event, data: event.data.join("\n") };
          event = { id: null, event: "message", data: [] };
          continue;
        }
        if (line.startsWith(":")) continue; // a comment: the server's keep-alive
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") event.data.push(value);
        else if (field === "id") event.id = value;
        else if (field === "event") event.event = value;
      }
    }
  } finally {
    reader.releaseLock();
  }
}
