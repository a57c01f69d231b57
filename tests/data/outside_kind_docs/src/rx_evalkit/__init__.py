"""A `regex` suite kind for evalkit: describe a language, answer with a regular expression."""
