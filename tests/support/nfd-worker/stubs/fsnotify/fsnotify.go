// Stub of github.com/fsnotify/fsnotify: NFD's local source compiles
// against it; a one-shot Discover never watches.
package fsnotify

import "errors"

type Op uint32

const (
	Create Op = 1 << iota
	Write
	Remove
	Rename
	Chmod
)

type Event struct {
	Name string
	Op   Op
}

type Watcher struct {
	Events chan Event
	Errors chan error
}

func NewWatcher() (*Watcher, error) { return nil, errors.New("fsnotify stub") }
func (w *Watcher) Add(string) error { return errors.New("fsnotify stub") }
func (w *Watcher) Close() error     { return nil }
