"""The usage activity: a request's usage, written once into the long-term store (`store.usage`)."""
