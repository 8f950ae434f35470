package pipeline

import (
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// route is the last stage: it counts each record emitted and hands it to
// the queue of every sink whose match selects it.
type route struct {
	router  notify.Router
	metrics *metrics.Metrics
}

// Dispatch returns each queue's Mark for the record, so that the gate can
// tell when every sink has handled it.
func (r route) Dispatch(c record.Change) []notify.Mark {
	r.metrics.RecordsEmitted.WithLabelValues(c.Resource, c.Type).Inc()
	return r.router.Dispatch(c)
}
