"""The room of the two small background workflows: a schedule's firing, and a webhook's delivery.

`ScheduledAsk` (`scheduled_ask`: one firing of a schedule) and `DeliverWebhook`
(`deliver_webhook`: one webhook, delivered until acknowledged or given up).
"""
