"""The nouns, SI inside: errors, units, number formats, chip, model, model types, layout."""
