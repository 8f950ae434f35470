package app

import (
	"context"
	"log/slog"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/admission"
)

// startAdmissionObserver serves the admission observer when
// admissionObserver.address is set: the API server calls it on every
// write the registration matches (deploy/components/admission-observer,
// the chart's admissionObserver.enabled).
func startAdmissionObserver(_ context.Context, cfg config.Config, notes identity.Noter, log *slog.Logger) (stop func(), err error) {
	o := cfg.AdmissionObserver
	if o.Address == "" {
		return func() {}, nil
	}
	_, stop, err = admission.Serve(admission.Options{Address: o.Address, CertFile: o.CertFile, KeyFile: o.KeyFile, ClientCAFile: o.ClientCAFile, TokenFile: o.TokenFile}, notes, log)
	return stop, err
}
