"""Layer 2, the wire: SSE decoding, OpenAI payloads, the final-message sentinel, classification,
and the httpx client with its deadline watchdog. Imports only :mod:`hermes_nb.core`."""
