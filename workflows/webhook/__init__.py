"""The room of `DeliverWebhook`: one webhook, delivered until acknowledged or given up."""
