"""Layer 4, the harness: UH missions, their preparation and runs, UH's artifact tree. Imports core and wire."""
