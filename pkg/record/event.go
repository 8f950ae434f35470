package record

import "strconv"

// EventRecord is the type of a record that carries what a Kubernetes
// Event said about its object (Change.Event), rather than a change of it.
const EventRecord = "event"

// Kubernetes Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event is what Kubernetes Events said about an object, folded per
// object and reason: a repeated Event counts up and moves its last time
// rather than adding another.
type Event struct {
	// Reason is the Event's short, machine-readable cause
	// ("FailedCreate", "FailedScheduling"); Type is Normal or Warning.
	Reason string `json:"reason"`
	Type   string `json:"type"`
	// Message is the last occurrence's human-readable text, at most
	// MaxEventMessage bytes; withheld for an Event about a Secret.
	Message string `json:"message,omitempty"`
	// Count is how many times it happened, First and Last when it first
	// and last did.
	Count int       `json:"count"`
	First Timestamp `json:"firstTime"`
	Last  Timestamp `json:"lastTime"`
	// ReportingController is the component that said it
	// ("replicaset-controller", "default-scheduler").
	ReportingController string `json:"reportingController,omitempty"`
	// Namespace and Name are the last Event object's.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// MaxEventMessage bounds an Event's message kept on a record: a
// controller's message is a sentence or two.
const MaxEventMessage = 1024

// Warning says whether the Event is a warning.
func (e Event) Warning() bool { return e.Type == EventWarning }

// String reads as a person would say it: `Warning FailedCreate: Error
// creating: pods "web-1" is forbidden: exceeded quota (×5)`.
func (e Event) String() string {
	s := e.Type + " " + e.Reason
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Count > 1 {
		s += " (×" + strconv.Itoa(e.Count) + ")"
	}
	return s
}
