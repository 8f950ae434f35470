package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/watcher"
)

func TestSyncProgressSaysWhatIsLeft(t *testing.T) {
	p := watcher.Progress{Watches: 40, Synced: 38, Objects: 100000}
	if got := fmt.Sprint(syncProgress(p, 10*time.Second)); got != "[synced 38 of 40 objects 100000]" {
		t.Errorf("without a count: %s", got)
	}
	p.Expected = 300000
	if got := fmt.Sprint(syncProgress(p, 10*time.Second)); got != "[synced 38 of 40 objects 100000 expected 300000 remaining 20s]" {
		t.Errorf("with a count: %s", got)
	}
}
