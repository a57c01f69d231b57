"""The one place that talks to a model: client, response cache, pricing, batches."""
