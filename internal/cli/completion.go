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
// from discovery (or a state dir's history), object names (TYPE/NAME, or
// a type then names) and namespaces from the cluster the flags and config
// point at. Cobra's `completion` command writes the bash, zsh, fish and
// powershell scripts that call it.

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
	// The history commands' -n is their own (no config key): the
	// namespace whose objects to offer all the same.
	if f := cmd.Flags().Lookup("namespace"); f != nil && isUnbound(f) && f.Changed {
		return cl, []string{f.Value.String()}
	}
	return cl, cfg.Namespaces
}

// completeArgs completes TYPE, TYPE/NAME and TYPE NAME arguments: types
// from discovery (or, with no cluster answering, from --state-dir's
// history), objects from the cluster.
func completeArgs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	cl, namespaces := connect(cmd)
	all := knownTypes(ctx, cmd, cl)
	find := func(name string) *discovery.Resource {
		i := slices.IndexFunc(all, func(r discovery.Resource) bool { return r.Matches(name) })
		if i < 0 || cl == nil {
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
			return withPrefix(objectNames(ctx, cl, *r, namespaces), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	case len(args) == 0 || cmd.Name() == "history":
		return withPrefix(typeNames(all), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeTypes completes a comma-separated list of types (--resources).
func completeTypes(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	cl, _ := connect(cmd)
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, name := range withPrefix(typeNames(knownTypes(ctx, cmd, cl)), last) {
		out = append(out, done+name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// knownTypes are the types discovery finds, or with no cluster answering
// those the history in the state dir knows (--state-dir, else as the
// config and the default name it).
func knownTypes(ctx context.Context, cmd *cobra.Command, cl *app.Clients) []discovery.Resource {
	if cl != nil {
		if catalog, err := discovery.New(cl.Discovery).Resources(ctx); err == nil && len(catalog.Watchable) > 0 {
			return catalog.Watchable
		}
	}
	dir, _ := cmd.Flags().GetString("state-dir")
	if cfg, err := loadConfigWithArgs(cmd, nil); dir == "" && err == nil {
		dir = cfg.State.Dir
	}
	if dir == "" {
		return nil
	}
	src, err := openStateDir(cmd, dir)
	if err != nil {
		return nil
	}
	types, _ := src.Resolve(ctx, "")
	return types
}

// typeNames are the types' plural names, sorted, each once.
func typeNames(types []discovery.Resource) []string {
	var out []string
	for _, r := range types {
		if !slices.Contains(out, r.GVR.Resource) {
			out = append(out, r.GVR.Resource)
		}
	}
	slices.Sort(out)
	return out
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
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// addCompletion completes a command's arguments as types and objects
// (withArgs) whatever its usage line says; its flags complete by their
// names (registerCompletions).
func addCompletion(cmd *cobra.Command, withArgs bool) {
	if withArgs {
		cmd.ValidArgsFunction = completeArgs
	}
}
