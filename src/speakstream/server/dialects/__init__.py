"""The wire protocols of other TTS services, each a thin translation into our own sessions, so
a framework's ElevenLabs or Cartesia client speaks to a self-hosted Kokoro by changing one URL."""
