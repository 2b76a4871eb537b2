def lookup(term: str) -> str:
    """Look a term up in the glossary."""
    return term
