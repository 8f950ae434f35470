package app

import (
	"net/http"
	"sync/atomic"
	"time"

	authnv1 "k8s.io/api/authentication/v1"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// TypesPath serves every type's health on a running kubediff, for
// `kubediff resources --server`.
const TypesPath = "/api/v1/types"

// TypeRow is one type as `kubediff resources` shows it: what discovery
// decided (watched, excluded, forbidden, not watchable, unavailable) and,
// for a watched type on a running kubediff, how its watches are doing.
type TypeRow struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	Status     string `json:"status"`
	Reason     string `json:"reason,omitempty"`
	// On a running kubediff: synced, syncing or retrying (the worst of its
	// namespaces'), objects cached, the last change seen.
	State     string                `json:"state,omitempty"`
	Objects   int                   `json:"objects,omitempty"`
	LastEvent time.Time             `json:"lastEvent,omitzero"`
	Watches   []watcher.TargetState `json:"watches,omitempty"`
}

// StateUnavailable marks an API group/version whose discovery fails (an
// aggregated API whose Service is gone): its types are unknown.
const StateUnavailable = "unavailable"

// Rows are the plan's types, with the watches' health when given.
func Rows(plan discovery.Plan, states []watcher.TargetState) []TypeRow {
	byType := map[string][]watcher.TargetState{}
	for _, st := range states {
		byType[st.Resource] = append(byType[st.Resource], st)
	}
	rows := make([]TypeRow, 0, len(plan.Statuses)+len(plan.Unavailable))
	for _, s := range plan.Statuses {
		r := s.Resource
		row := TypeRow{Group: r.GVR.Group, Version: r.GVR.Version, Resource: r.GVR.Resource, Kind: r.Kind, Namespaced: r.Namespaced, Status: s.State, Reason: s.Reason}
		if watches := byType[r.String()]; len(watches) > 0 {
			row.Watches = watches
			for _, w := range watches {
				row.State = watcher.WorseState(row.State, w.State)
				row.Objects += w.Objects
				if w.LastEvent.After(row.LastEvent) {
					row.LastEvent = w.LastEvent
				}
				if w.Error != "" {
					row.Reason = w.Error
				}
			}
		}
		rows = append(rows, row)
	}
	for _, gv := range plan.Unavailable {
		rows = append(rows, TypeRow{Group: gv.Group, Version: gv.Version, Status: StateUnavailable, Reason: "the API server cannot reach this API group (an aggregated API whose Service does not answer)"})
	}
	return rows
}

// typeHealth keeps the latest plan for the types endpoint.
type typeHealth struct {
	plan    atomic.Pointer[discovery.Plan]
	watcher *watcher.Watcher
}

// routes serves TypesPath to callers the API server knows.
func (h *typeHealth) routes(access *historyapi.Access) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET "+TypesPath, access.Require(func(w http.ResponseWriter, _ *http.Request, _ *authnv1.UserInfo) {
			plan := h.plan.Load()
			if plan == nil {
				plan = &discovery.Plan{}
			}
			historyapi.WriteJSON(w, map[string]any{"types": Rows(*plan, h.watcher.States())})
		}))
	}
}
