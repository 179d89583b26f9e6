// A live timeline on a canvas: text deltas, chunks sent, audio arriving, the playback position
// and the moment of first audio, on one time axis (seconds since Speak).

const LANES = [
  { key: "text", label: "text", color: "#8a8f98" },
  { key: "chunk", label: "chunks", color: "#2f6fdd" },
  { key: "audio", label: "audio", color: "#1f9d55" },
];

export class Timeline {
  constructor(canvas) {
    this.canvas = canvas;
    this.clear();
  }

  clear() {
    this.events = [];
    this.firstAudio = null;
    this.playback = null;
  }

  add(kind, t, weight = 1) {
    this.events.push({ kind, t, weight });
    if (kind === "audio" && this.firstAudio === null) this.firstAudio = t;
  }

  draw() {
    const { canvas } = this;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    if (canvas.width !== width * ratio) {
      canvas.width = width * ratio;
      canvas.height = height * ratio;
    }
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    const left = 64;
    const span = Math.max(2, ...this.events.map((e) => e.t), this.playback ?? 0) * 1.05;
    const x = (t) => left + ((width - left - 10) * t) / span;
    const laneHeight = (height - 24) / LANES.length;
    g.font = "12px system-ui, sans-serif";
    LANES.forEach((lane, i) => {
      const y = 8 + laneHeight * i + laneHeight / 2;
      g.fillStyle = "#555";
      g.fillText(lane.label, 6, y + 4);
      g.fillStyle = lane.color;
      for (const e of this.events) {
        if (e.kind !== lane.key) continue;
        const w = lane.key === "audio" ? Math.max(2, x(e.t + e.weight) - x(e.t)) : 2;
        g.fillRect(x(e.t), y - laneHeight / 4, w, laneHeight / 2);
      }
    });
    g.fillStyle = "#999";
    for (let s = 0; s <= span; s += span > 20 ? 5 : 1) {
      g.fillText(`${s}s`, x(s) - 6, height - 4);
    }
    if (this.firstAudio !== null) {
      g.strokeStyle = "#d33";
      g.beginPath();
      g.moveTo(x(this.firstAudio), 4);
      g.lineTo(x(this.firstAudio), height - 18);
      g.stroke();
      g.fillStyle = "#d33";
      g.fillText(`first audio ${(this.firstAudio * 1000).toFixed(0)} ms`, x(this.firstAudio) + 4, 14);
    }
    if (this.playback !== null) {
      g.strokeStyle = "#111";
      g.setLineDash([4, 3]);
      g.beginPath();
      g.moveTo(x(this.playback), 4);
      g.lineTo(x(this.playback), height - 18);
      g.stroke();
      g.setLineDash([]);
    }
  }
}
