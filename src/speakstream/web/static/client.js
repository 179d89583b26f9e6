// The browser side of speakstream's wire protocol: the bidirectional WebSocket session and the
// agent's Server-Sent Events. A frame is control only if the whole frame parses as a JSON object.

const decoder = new TextDecoder("utf-8", { fatal: true });

export function classifyFrame(data) {
  if (typeof data === "string") {
    return { control: JSON.parse(data) };
  }
  const bytes = new Uint8Array(data);
  if (bytes.length && bytes[0] === 0x7b && bytes[bytes.length - 1] === 0x7d) {
    try {
      const value = JSON.parse(decoder.decode(bytes));
      if (value && typeof value === "object" && !Array.isArray(value)) return { control: value };
    } catch (error) {
      // raw PCM that happens to begin with "{": audio
    }
  }
  return { audio: data };
}

export class SessionClient {
  constructor(url, { onAudio, onControl, onClose }) {
    this.url = url;
    this.handlers = { onAudio, onControl, onClose };
    this.socket = null;
    this.info = null;
  }

  connect() {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url);
      socket.binaryType = "arraybuffer";
      socket.onerror = () => reject(new Error("the speech session could not be opened"));
      socket.onclose = (event) => this.handlers.onClose?.(event);
      socket.onmessage = (event) => {
        const frame = classifyFrame(event.data);
        if (frame.audio) {
          this.handlers.onAudio?.(frame.audio);
        } else if (frame.control.type === "session_start") {
          this.info = frame.control;
          resolve(this);
        } else {
          this.handlers.onControl?.(frame.control);
        }
      };
      this.socket = socket;
    });
  }

  get open() {
    return this.socket && this.socket.readyState === WebSocket.OPEN;
  }

  send(message) {
    this.socket.send(JSON.stringify(message));
  }

  close() {
    this.socket?.close();
  }
}

// POST a JSON body and yield each Server-Sent Event whole: bytes are buffered and an event is
// parsed only at its blank-line delimiter, whatever the network's chunking.
export async function* sseEvents(url, body, { signal, headers = {} } = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...headers },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) {
    const detail = await response.text();
    throw new Error(`HTTP ${response.status}: ${detail.slice(0, 200)}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = parseBlock(block);
      if (event) yield event;
    }
  }
}

function parseBlock(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event: name, data: JSON.parse(data.join("\n")) } : null;
}

export function base64ToBytes(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}
