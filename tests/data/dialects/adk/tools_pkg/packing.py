"""A tool the ADK sample names: `tools_pkg.packing.packing_list`."""


def packing_list(climate: str) -> str:
    """What to pack for a climate (warm, cold or wet)."""
    return {"warm": "light clothes", "cold": "a coat", "wet": "a raincoat"}.get(climate, "layers")
