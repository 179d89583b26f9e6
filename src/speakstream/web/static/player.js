// Gapless playback of 16-bit PCM with the Web Audio API.
// Every piece becomes an AudioBuffer scheduled to start exactly where the previous one ends, so
// joins are sample-accurate (no clicks). Playback starts after a small jitter buffer; when a piece
// arrives after the scheduled audio ran out, that is an underrun (an audible gap).

export class PcmPlayer {
  constructor({ sampleRate = 24000, jitterSeconds = 0.2 } = {}) {
    this.sampleRate = sampleRate;
    this.jitterSeconds = jitterSeconds;
    this.context = null;
    this.reset();
  }

  async ensureContext() {
    if (!this.context) {
      this.context = new AudioContext({ sampleRate: this.sampleRate, latencyHint: "interactive" });
    }
    if (this.context.state === "suspended") {
      await this.context.resume();
    }
  }

  reset() {
    this.sources = new Set();
    this.nextTime = 0;
    this.startTime = 0;
    this.started = false;
    this.scheduledSeconds = 0;
    this.underruns = 0;
    this.carry = null;
  }

  enqueue(bytes) {
    let data = new Uint8Array(bytes);
    if (this.carry) {
      const joined = new Uint8Array(this.carry.length + data.length);
      joined.set(this.carry);
      joined.set(data, this.carry.length);
      data = joined;
      this.carry = null;
    }
    if (data.length % 2) {
      this.carry = data.slice(-1);
      data = data.slice(0, -1);
    }
    if (!data.length || !this.context) return;
    const ints = new Int16Array(data.buffer, data.byteOffset, data.length / 2);
    const buffer = this.context.createBuffer(1, ints.length, this.sampleRate);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < ints.length; i++) channel[i] = ints[i] / 32768;
    this.schedule(buffer);
  }

  schedule(buffer) {
    const now = this.context.currentTime;
    if (!this.started) {
      this.started = true;
      this.nextTime = now + this.jitterSeconds;
      this.startTime = this.nextTime;
    } else if (this.nextTime < now) {
      if (now - this.nextTime > 0.02) this.underruns += 1;
      this.nextTime = now + 0.02;
    }
    const source = this.context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.context.destination);
    source.onended = () => this.sources.delete(source);
    source.start(this.nextTime);
    this.sources.add(source);
    this.nextTime += buffer.duration;
    this.scheduledSeconds += buffer.duration;
  }

  // Seconds of this reply heard so far.
  position() {
    if (!this.started || !this.context) return 0;
    return Math.min(Math.max(0, this.context.currentTime - this.startTime), this.scheduledSeconds);
  }

  drained() {
    return !this.started || (this.context && this.context.currentTime >= this.nextTime);
  }

  // Barge-in: silence now. Returns how long stopping took, in milliseconds.
  stop() {
    const began = performance.now();
    for (const source of this.sources) {
      try {
        source.stop();
      } catch (error) {
        // a source that never started cannot be stopped; disconnecting silences it
      }
      source.disconnect();
    }
    this.sources.clear();
    this.started = false;
    return performance.now() - began;
  }

  get playing() {
    return this.sources.size;
  }
}
