"""Layer 2: SSE decoding, OpenAI payloads, the final-message sentinel, the one reading, the httpx client."""
