// Metrics: netdevd's Prometheus metrics. `MetricsRecorder` counts what the model does not hold (the session's
// activity, hook runs, events), `MetricsExporter` renders a model and those counts in the text exposition, and
// `MetricsTextfile` writes it for node_exporter at most once a second.
