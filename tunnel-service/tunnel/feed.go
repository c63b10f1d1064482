package tunnel

import (
	"context"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The status streams of one owner share one reading of the store: a feed
// per owner with a stream open on this replica, whose one goroutine reads
// the owner's statuses (Manager.Statuses: one Tunnels call, a DynamoDB
// Query) when a change is made through this replica and every StreamPoll
// otherwise (for the changes of other replicas, which only the store
// knows), and hands each reading to every stream of the owner. N streams
// of an owner thus cost the store what one does; what each stream costs
// is its goroutine, its connection and the comparison of a reading with
// what it sent.
//
// A reading is a map that nobody changes once handed out: the streams
// share it. Each subscription holds at most one reading not yet taken,
// the newest (a slow stream skips readings, never queues them), so a feed
// never waits for a stream.

// Reading is one reading of an owner's statuses, shared by every stream of
// the owner: read it, never change it.
type Reading struct {
	Statuses map[string]Status
	// Err is why the store could not be read; Statuses is nil then.
	Err error
}

// Subscription is one status stream's share of its owner's feed.
type Subscription struct {
	// Readings receives the owner's statuses: the latest reading at once
	// if the feed has one, then each new one. A reading not taken before
	// the next is replaced by it.
	Readings <-chan *Reading
	ch       chan *Reading
	f        *feed
	m        *Manager
}

// feed is the reading of one owner's statuses on this replica.
type feed struct {
	owner  string
	subs   map[*Subscription]struct{}
	latest *Reading // nil until the first reading
	wake   chan struct{}
	cancel context.CancelFunc
}

// Subscribe opens a status stream's subscription to the owner's statuses;
// Close ends it. RateLimited when the owner has StreamLimit streams open
// on this replica already.
func (m *Manager) Subscribe(owner string) (*Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.feeds[owner]
	if f != nil && len(f.subs) >= m.opts.StreamLimit {
		return nil, sshdeck.Errorf(sshdeck.RateLimited,
			"stream limit reached: at most %d status streams per user may be open at once (SSHDECK_LIMIT_STREAMS); close one", m.opts.StreamLimit)
	}
	if f == nil {
		ctx, cancel := context.WithCancel(m.loopCtx)
		f = &feed{owner: owner, subs: map[*Subscription]struct{}{}, wake: make(chan struct{}, 1), cancel: cancel}
		m.feeds[owner] = f
		m.feedsRunning.Add(1)
		go m.runFeed(ctx, f)
	}
	ch := make(chan *Reading, 1)
	s := &Subscription{Readings: ch, ch: ch, f: f, m: m}
	f.subs[s] = struct{}{}
	if f.latest != nil {
		ch <- f.latest
	}
	return s, nil
}

// Close ends the subscription; the owner's feed stops with its last one.
func (s *Subscription) Close() {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	f := s.f
	if _, ok := f.subs[s]; !ok {
		return
	}
	delete(f.subs, s)
	if len(f.subs) == 0 {
		f.cancel()
		delete(m.feeds, f.owner)
	}
}

// Streams returns how many status streams the owner has open here.
func (m *Manager) Streams(owner string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.feeds[owner]; f != nil {
		return len(f.subs)
	}
	return 0
}

// runFeed reads the owner's statuses at once, then after each change made
// here and every StreamPoll, until its last subscription closes.
func (m *Manager) runFeed(ctx context.Context, f *feed) {
	defer m.feedsRunning.Done()
	poll := time.NewTicker(m.opts.StreamPoll)
	defer poll.Stop()
	for {
		all, err := m.Statuses(ctx, f.owner)
		if ctx.Err() != nil {
			return
		}
		r := &Reading{Statuses: all, Err: err}
		if err != nil {
			m.log.Warn("status streams cannot read the store", "owner", f.owner, "error", err.Error())
		}
		m.mu.Lock()
		if err == nil || f.latest == nil {
			f.latest = r
		}
		for s := range f.subs {
			select {
			case <-s.ch: // not taken: replaced
			default:
			}
			s.ch <- r
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-poll.C:
		}
	}
}

// notify wakes the owner's feed after a change made through this replica
// (wake-ups coalesce: one at most waits).
func (m *Manager) notify(owner string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.feeds[owner]; f != nil {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}
