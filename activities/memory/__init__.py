"""The memory activities: the memory tools and recall, on the long-term store (`store/`)."""
