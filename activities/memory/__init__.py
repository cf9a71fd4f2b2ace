"""The activities on the long-term store (`store/`): the memory tools and recall, and the requests' usage."""
