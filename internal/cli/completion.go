package cli

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/discovery"
)

// Dynamic completion, as kubectl completes `kubectl get`: resource types
// from discovery, object names (TYPE/NAME, or a type then names) and
// namespaces from the cluster the flags and config point at. Cobra's
// `completion` command writes the bash, zsh, fish and powershell scripts
// that call it.

// completionTimeout keeps a slow or unreachable cluster from hanging a
// shell's Tab.
const completionTimeout = 5 * time.Second

// connect returns clients and the namespaces the flags and config name,
// or nil when the cluster cannot be reached (completion then offers
// nothing, silently).
func connect(cmd *cobra.Command) (*app.Clients, []string) {
	cfg, err := loadConfigWithArgs(cmd, nil)
	if err != nil {
		return nil, nil
	}
	rc, err := app.RestConfig(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, nil
	}
	rc.Timeout = completionTimeout
	cl, err := app.NewClients(rc)
	if err != nil {
		return nil, nil
	}
	return cl, cfg.Namespaces
}

// completeArgs completes watch's arguments.
func completeArgs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	cl, namespaces := connect(cmd)
	if cl == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	catalog, _ := discovery.New(cl.Discovery).Resources(ctx)
	all := catalog.Watchable
	find := func(name string) *discovery.Resource {
		i := slices.IndexFunc(all, func(r discovery.Resource) bool { return r.Matches(name) })
		if i < 0 {
			return nil
		}
		return &all[i]
	}
	switch typ, prefix, isObject := strings.Cut(toComplete, "/"); {
	case isObject:
		if r := find(typ); r != nil {
			var out []string
			for _, name := range objectNames(ctx, cl, *r, namespaces) {
				if strings.HasPrefix(name, prefix) {
					out = append(out, typ+"/"+name)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	case len(args) == 1 && !strings.ContainsAny(args[0], "/,"):
		if r := find(args[0]); r != nil { // kubectl get deployment <names>
			return objectNames(ctx, cl, *r, namespaces), cobra.ShellCompDirectiveNoFileComp
		}
	case len(args) == 0:
		var out []string
		for _, r := range all {
			if name := r.GVR.Resource; strings.HasPrefix(name, toComplete) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// objectNames lists the objects of r (in namespaces, or all), by
// metadata only.
func objectNames(ctx context.Context, cl *app.Clients, r discovery.Resource, namespaces []string) []string {
	if !r.Namespaced || len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var out []string
	for _, ns := range namespaces {
		list, err := cl.Metadata.Resource(r.GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, o := range list.Items {
			if !slices.Contains(out, o.Name) {
				out = append(out, o.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// completeNamespaces completes --namespace.
func completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	cl, _ := connect(cmd)
	if cl == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := cl.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, toComplete) {
			out = append(out, ns.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// addCompletion registers the dynamic completions on a command with the
// selection flags.
func addCompletion(cmd *cobra.Command, withArgs bool) {
	if withArgs {
		cmd.ValidArgsFunction = completeArgs
	}
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces)
	_ = cmd.RegisterFlagCompletionFunc("exclude-namespace", completeNamespaces)
}
