"""What every layer shares: types, errors, settings, validation, the access rule, compat."""
