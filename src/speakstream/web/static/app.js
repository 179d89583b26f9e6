// The page: speak an agent's reply (Server-Sent Events from /agent) or a text (the bidirectional
// WebSocket session), play it gaplessly, draw the timeline and highlight the current word.
import { PcmPlayer } from "./player.js";
import { SessionClient, base64ToBytes, sseEvents } from "./client.js";
import { Timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
// The jitter buffer: 300 ms, or `?jitter_ms=N` for a slow machine or network (the tests use a
// large one, so their underrun count checks the player's scheduling, not the machine's speed).
const jitterMs = Number(new URLSearchParams(location.search).get("jitter_ms"));
const player = new PcmPlayer({ sampleRate: 24000, jitterSeconds: jitterMs > 0 ? jitterMs / 1000 : 0.3 });
const timeline = new Timeline($("timeline"));
const stats = { firstAudioMs: null, chunks: 0, scheduledSeconds: 0, underruns: 0, state: "idle", stopLatencyMs: null };
window.speakstreamStats = stats;

let turn = null; // { started, abort, requestId, words, streaming }
let session = null;

function setState(state) {
  stats.state = state;
  $("status").textContent = state;
  const busy = state === "connecting" || state === "speaking" || state === "playing";
  $("speak").disabled = busy;
  $("stop").disabled = !busy;
}

function now() {
  return (performance.now() - turn.started) / 1000;
}

function authHeaders() {
  const key = $("key").value.trim();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

// Sample text per language: picking a voice of another language puts its sample in the text box,
// unless the text there is the person's own.
const samples = {};
let languageOf = {};
let lastSample = null;

function offerSample() {
  const sample = samples[languageOf[$("voice").value]];
  const untouched = lastSample === null ? $("text").defaultValue : lastSample;
  if (sample && $("text").value === untouched) {
    $("text").value = sample;
    lastSample = sample;
  }
}

async function loadChoices() {
  const [voices, replies] = await Promise.all([
    fetch("/v1/audio/voices", { headers: authHeaders() }).then((r) => r.json()),
    fetch("/agent/replies", { headers: authHeaders() }).then((r) => r.json()),
  ]);
  for (const group of voices.languages) {
    const optgroup = document.createElement("optgroup");
    optgroup.label = `${group.name} (${group.language})`;
    for (const id of group.voices) {
      const voice = voices.voices.find((v) => v.id === id);
      optgroup.appendChild(new Option(`${id} (${voice.gender})`, id, id === voices.default, id === voices.default));
    }
    $("voice").appendChild(optgroup);
    samples[group.language] = group.sample;
  }
  const saved = voices.voices.filter((v) => v.saved);
  if (saved.length) {
    const optgroup = document.createElement("optgroup");
    optgroup.label = "Saved voices";
    for (const voice of saved) optgroup.appendChild(new Option(`${voice.id} (${voice.blend})`, voice.id));
    $("voice").prepend(optgroup);
  }
  languageOf = Object.fromEntries(voices.voices.map((v) => [v.id, v.language]));
  for (const reply of replies.replies) {
    $("reply").add(new Option(`${reply.id}: ${reply.text.slice(0, 40)}...`, reply.id, reply.id === replies.default, reply.id === replies.default));
  }
}

function onAudio(bytes) {
  if (!turn || turn.stopped) return;
  const t = now();
  if (stats.firstAudioMs === null) stats.firstAudioMs = Math.round(t * 1000);
  player.enqueue(bytes);
  timeline.add("audio", t, bytes.byteLength / 2 / 24000);
  refreshStats();
}

function onChunkText(text) {
  stats.chunks += 1;
  timeline.add("chunk", now());
  const span = document.createElement("span");
  span.className = "pending";
  span.textContent = `${text} `;
  $("transcript").append(span);
}

function onWords(message) {
  const offset = turn.words.length;
  for (const word of message.words) turn.words.push(word);
  const spans = [...$("transcript").querySelectorAll(".pending")];
  const target = spans.find((s) => s.textContent.trim() === message.text.trim()) || spans[0];
  if (!target) return;
  const text = target.textContent;
  target.className = "";
  target.textContent = "";
  let at = 0;
  message.words.forEach((word, i) => {
    const found = text.indexOf(word.word, at);
    if (found < 0) return;
    target.append(text.slice(at, found));
    const span = document.createElement("span");
    span.className = "word";
    span.dataset.index = String(offset + i);
    span.textContent = word.word;
    target.append(span);
    at = found + word.word.length;
  });
  target.append(text.slice(at));
}

function refreshStats() {
  stats.scheduledSeconds = Number(player.scheduledSeconds.toFixed(3));
  stats.underruns = player.underruns;
  $("first").textContent = stats.firstAudioMs === null ? "-" : `${stats.firstAudioMs} ms`;
  $("chunks").textContent = String(stats.chunks);
  $("scheduled").textContent = `${stats.scheduledSeconds.toFixed(1)} s`;
  $("underruns").textContent = String(stats.underruns);
  $("stoplat").textContent = stats.stopLatencyMs === null ? "-" : `${stats.stopLatencyMs.toFixed(1)} ms`;
}

let lastFrame = 0;

// Redraw ten times a second: enough for the eye, and it leaves the CPU to the speech server.
function animate(time) {
  requestAnimationFrame(animate);
  if (time - lastFrame < 100) return;
  lastFrame = time;
  if (turn) {
    const position = player.position();
    timeline.playback = stats.firstAudioMs === null ? null : stats.firstAudioMs / 1000 + player.jitterSeconds + position;
    const current = turn.words.findIndex((w) => w.start_s <= position && position < w.end_s);
    for (const span of $("transcript").querySelectorAll(".word.current")) span.classList.remove("current");
    if (current >= 0) $("transcript").querySelector(`.word[data-index="${current}"]`)?.classList.add("current");
    if (stats.state === "playing" && player.drained()) setState("done");
    refreshStats();
  }
  timeline.draw();
}

async function speakAgent(mode) {
  const body = {
    prompt: $("text").value,
    mode,
    voice: $("voice").value,
    speed: Number($("speed").value),
    reply_id: $("reply").value,
  };
  for await (const { event, data } of sseEvents("/agent", body, { signal: turn.abort.signal, headers: authHeaders() })) {
    if (event === "text_delta") timeline.add("text", now());
    else if (event === "chunk_sent") onChunkText(data.text);
    else if (event === "audio_chunk") onAudio(base64ToBytes(data.audio));
    else if (event === "word_timestamps") onWords(data);
    else if (event === "error") throw new Error(data.message);
    else if (event === "agent_done") break;
  }
}

// A short-lived token for the WebSocket handshake: the key itself never goes into a URL.
async function sessionToken() {
  if (!$("key").value.trim()) return null;
  const response = await fetch("/v1/session-token", { method: "POST", headers: authHeaders() });
  if (!response.ok) throw new Error(`session token: HTTP ${response.status}`);
  return (await response.json()).token;
}

async function openSession() {
  if (session && session.open) return session;
  const token = await sessionToken();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}/invocations-bidirectional-stream${token ? `?token=${encodeURIComponent(token)}` : ""}`;
  session = new SessionClient(url, {
    onAudio: (bytes) => onAudio(bytes),
    onControl: (message) => turn?.onControl?.(message),
    onClose: () => (session = null),
  });
  return session.connect();
}

async function speakText() {
  const client = await openSession();
  const requestId = `page-${Date.now()}`;
  turn.requestId = requestId;
  const finished = new Promise((resolve, reject) => {
    turn.onControl = (message) => {
      if (message.request_id !== requestId) return;
      if (message.type === "word_timestamps") {
        onChunkText(message.text);
        onWords(message);
      } else if (message.type === "synthesis_complete" || message.type === "cancelled") resolve();
      else if (message.type === "error") reject(new Error(message.message));
    };
  });
  timeline.add("text", now());
  client.send({ type: "text", text: $("text").value, request_id: requestId, voice: $("voice").value, speed: Number($("speed").value) });
  await finished;
}

async function speak() {
  stop(false);
  await player.ensureContext();
  player.reset();
  timeline.clear();
  $("transcript").textContent = "";
  Object.assign(stats, { firstAudioMs: null, chunks: 0, scheduledSeconds: 0, underruns: 0, stopLatencyMs: null });
  turn = { started: performance.now(), abort: new AbortController(), words: [], requestId: null, onControl: null };
  const mine = turn;
  setState("speaking");
  try {
    const mode = $("mode").value;
    await (mode === "text" ? speakText() : speakAgent(mode));
    if (turn === mine && stats.state === "speaking") setState("playing");
  } catch (error) {
    if (turn === mine && stats.state !== "stopped") {
      console.warn(error);
      $("status").textContent = `error: ${error.message}`;
      stats.state = "error";
      $("speak").disabled = false;
      $("stop").disabled = true;
    }
  }
}

function stop(userAction = true) {
  if (!turn) return;
  turn.stopped = true;
  turn.abort.abort();
  if (turn.requestId && session && session.open) session.send({ type: "cancel", request_id: turn.requestId });
  const latency = player.stop();
  if (userAction) {
    stats.stopLatencyMs = latency;
    setState("stopped");
  }
}

$("speak").addEventListener("click", () => speak());
$("stop").addEventListener("click", () => stop(true));
$("mode").addEventListener("change", () => {
  $("reply").disabled = $("mode").value === "text";
  if ($("mode").value === "text") $("text").value = "Thanks for waiting, I found your booking. Your flight leaves tomorrow at nine.";
});
$("voice").addEventListener("change", offerSample);
loadChoices().catch((error) => ($("status").textContent = `could not load voices: ${error.message}`));
requestAnimationFrame(animate);
