"""A conversation kept outside its workflow: signed snapshot tokens and the thread archive's segments."""
