package record

// CloudEvent is a record as a CloudEvents 1.0 structured-mode JSON
// envelope, as the webhook and Kafka sinks send it with format:
// cloudevents.
type CloudEvent struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Source          string `json:"source"`
	Type            string `json:"type"`
	Subject         string `json:"subject"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	Data            Change `json:"data"`
}

// CloudEventContentType is the media type of a structured-mode event.
const CloudEventContentType = "application/cloudevents+json"

// NewCloudEvent wraps c; source is the event's source attribute.
func NewCloudEvent(c Change, source string) CloudEvent {
	return CloudEvent{
		SpecVersion: "1.0",
		// The record's id names one write of one object, so a receiver
		// can drop the duplicate of a retried delivery.
		ID:              c.ID,
		Source:          source,
		Type:            "io.kubediff.object." + c.Type,
		Subject:         c.Kind + "/" + c.ObjectName(),
		Time:            c.Time.String(),
		DataContentType: "application/json",
		Data:            c,
	}
}
