"""The harness: UH missions, their preparation and runs, UH's artifact tree."""
