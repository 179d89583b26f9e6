"""The wire protocols of other TTS services, one folder per vendor, each a thin translation into
our own sessions, so a framework's ElevenLabs, Cartesia or Deepgram client speaks to a self-hosted
Kokoro by changing one URL."""
