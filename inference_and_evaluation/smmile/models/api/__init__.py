"""API and server models: one async backend base (concurrency, retries, accounting, secret scrubbing)
with thin provider subclasses, and the families of the original API / ollama scripts (spec §3.9-§3.13)."""
