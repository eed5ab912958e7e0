"""Search: channels, fusion, the source design's ranking rules, and what a search
keeps between calls."""
