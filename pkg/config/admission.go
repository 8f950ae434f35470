package config

import (
	"errors"
	"fmt"
)

// check checks the admission observer's settings: an address needs a
// certificate and key (the API server calls webhooks over TLS only) and a
// way to authenticate the API server (a review is a claim of who wrote),
// and a certificate without an address would be served nowhere.
func (o AdmissionObserverConfig) check() []error {
	var errs []error
	if err := checkHTTPAddress(o.Address); err != nil {
		errs = append(errs, fmt.Errorf("admissionObserver.address (--admission-observer-address): %w", err))
	}
	switch {
	case o.Address != "" && (o.CertFile == "" || o.KeyFile == ""):
		errs = append(errs, errors.New("admissionObserver.address (--admission-observer-address) needs admissionObserver.certFile and admissionObserver.keyFile (--admission-observer-cert-file, --admission-observer-key-file): the API server calls webhooks over TLS only"))
	case o.Address == "" && (o.CertFile != "" || o.KeyFile != ""):
		errs = append(errs, errors.New("admissionObserver.certFile and keyFile are set but admissionObserver.address (--admission-observer-address) is not: set the address to serve the admission observer"))
	case o.Address != "" && o.ClientCAFile == "" && o.TokenFile == "":
		errs = append(errs, errors.New("admissionObserver.address (--admission-observer-address) needs admissionObserver.clientCAFile or admissionObserver.tokenFile (--admission-observer-client-ca-file, --admission-observer-token-file): a review names who wrote, and without proof that the API server sent it anyone who reaches the port could name anyone (docs/identity.md#who-may-post-a-review)"))
	}
	return errs
}
