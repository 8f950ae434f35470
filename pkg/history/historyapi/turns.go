package historyapi

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// queryTurns is how many history queries do their work at once, and
// queryShare the most of the time they may take. Once synced kubediff
// runs on one P (GOMAXPROCS=1), on a machine it shares with the API
// server: callers asking as fast as they are answered took every cycle
// the live stream and the API server needed (20 callers: p99 5-6× its
// quiet value, docs/benchmarks.md). So queries take turns, and each turn
// rests three times as long as its work took before the next begins:
// the history's callers get a quarter of one core at most, whatever
// their number (1.2-1.8×), and a lone query is answered as fast as before.
// A turn rests at most maxRest: one long diff (bounded at 10 s) would
// otherwise hold every other caller for 40 s.
const (
	queryTurns = 1
	queryShare = 0.25
	maxRest    = time.Second
)

// turns lets a fixed number of queries work at a time; the others wait,
// not runnable, until a turn is free or their request ends.
type turns chan struct{}

func newTurns(n int) turns { return make(turns, n) }

// take waits for a turn; give it back when done.
func (t turns) take(ctx context.Context) error {
	select {
	case t <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errNoTurn, ctx.Err())
	}
}

func (t turns) give() { <-t }

// errNoTurn is a request that ended while it waited for its turn.
var errNoTurn = errors.New("the request ended while other history queries were answered")

// inTurn runs work, which reads the history and makes the answer, in a
// turn, which rests after it (queryShare) before the next may begin. The
// caller writes the answer meanwhile: a client slow to read holds no
// turn, and no caller waits for its own turn's rest.
func (t turns) inTurn(ctx context.Context, work func() ([]byte, error)) ([]byte, error) {
	return inTurn(ctx, t, work)
}

// inTurn is turns.inTurn for work of any result: MCP's reads (UserSource)
// take the same turns as the HTTP API's.
func inTurn[T any](ctx context.Context, t turns, work func() (T, error)) (T, error) {
	if err := t.take(ctx); err != nil {
		var none T
		return none, err
	}
	start := time.Now()
	defer func() {
		rest := min(time.Duration(float64(time.Since(start))*(1/queryShare-1)), maxRest)
		time.AfterFunc(rest, t.give)
	}()
	return work()
}
