package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubediff/kubediff/pkg/config"
)

// applyArgs reads watch's arguments (readArgs). Given, they replace the
// resources and objects of the config file and flags.
func applyArgs(cfg *config.Config, args []string) error {
	if len(args) == 0 {
		return nil
	}
	types, objects, err := readArgs(args)
	if err != nil {
		return err
	}
	cfg.Resources, cfg.Objects = types, objects
	return nil
}

// readArgs reads arguments as kubectl reads `kubectl get`'s: types
// (deployments,configmaps), objects (deployment/web cm/settings), or one
// type and names of it (deployment web api), every object as TYPE/NAME.
func readArgs(args []string) (types, objects []string, err error) {
	if len(args) == 0 {
		return nil, nil, nil
	}
	bothForms := func(arg string) error {
		return usageError{fmt.Errorf("arguments: %s: give objects as TYPE/NAME, or a type and then names, not both", arg)}
	}
	if !strings.Contains(args[0], "/") {
		// A type list, or one type and names of it.
		types = strings.Split(args[0], ",")
		for _, name := range args[1:] {
			switch {
			case strings.Contains(name, "/"):
				return nil, nil, bothForms(name)
			case len(types) != 1:
				return nil, nil, usageError{fmt.Errorf("arguments: %s: names must follow one type (as in kubectl get deployment web), not %s", name, args[0])}
			}
			objects = append(objects, types[0]+"/"+name)
		}
		if len(objects) > 0 {
			types = nil // the names said which objects of it
		}
	} else {
		for _, arg := range args {
			if !strings.Contains(arg, "/") {
				return nil, nil, bothForms(arg)
			}
			objects = append(objects, arg)
		}
	}
	return types, objects, checkArgs(args[0], types, objects)
}

// checkArgs refuses empty types and objects that are not TYPE/NAME.
func checkArgs(first string, types, objects []string) error {
	var errs []error
	for _, t := range types {
		if strings.TrimSpace(t) == "" {
			errs = append(errs, fmt.Errorf("%q: an empty type", first))
		}
	}
	for _, o := range objects {
		_, _, err := config.ParseObject(o)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return usageError{fmt.Errorf("arguments: %w", err)}
	}
	return nil
}
