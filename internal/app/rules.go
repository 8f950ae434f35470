package app

import (
	"fmt"
	"log/slog"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/rules"
)

// compileRules compiles the configured rules (validated already, so an
// error here is not the user's), and has each rule's failures logged
// once when they start and once when the rule evaluates again, and its
// summary's first failure logged.
func compileRules(cfg config.Config, log *slog.Logger) (*rules.Set, error) {
	set, err := rules.Compile(cfg.Rules, cfg.RulePack)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	set.OnError = func(rule string, err error, healed bool) {
		if healed {
			log.Info("rule evaluates again", "rule", rule)
			return
		}
		log.Error("rule fails to evaluate and matches nothing until it does (logged once)", "rule", rule, "err", err)
	}
	set.OnSummaryError = func(rule string, err error) {
		log.Warn("rule's summary fails to render: its records get a short summary or none (logged once)", "rule", rule, "err", err)
	}
	return set, nil
}
