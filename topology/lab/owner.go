package lab

import (
	"errors"
	"fmt"
)

// NotOwnerError says that a lab of the name asked for is deployed here for
// another owner than the manager's: a destroy leaves it as it is. An
// agent that meets it never built a share of its own here.
type NotOwnerError struct {
	Lab, Owner, Asked string
}

func (e *NotOwnerError) Error() string {
	return fmt.Sprintf("lab %s here was deployed %s, not for %s: it was left as it is", e.Lab, ownerWords(e.Owner), e.Asked)
}

// ownerWords says who a lab was deployed for.
func ownerWords(owner string) string {
	if owner == "" {
		return "by a person (no owner recorded)"
	}
	return "for " + owner
}

// ErrNotOwner is wrapped by a NotOwnerError.
var ErrNotOwner = errors.New("lab of another owner")

func (e *NotOwnerError) Unwrap() error { return ErrNotOwner }

// CheckOwner refuses to touch lab labName when the manager acts for an
// owner and the lab records another (a *NotOwnerError). A lab without a
// state (gone, or never deployed) is no one's: nothing to refuse.
func (m *Manager) CheckOwner(labName string) error { return m.checkOwner(labName) }

func (m *Manager) checkOwner(labName string) error {
	if m.Owner == "" {
		return nil
	}
	st, err := m.loadState(labName)
	if err != nil || st == nil || st.Owner == m.Owner {
		return nil
	}
	return &NotOwnerError{Lab: labName, Owner: st.Owner, Asked: m.Owner}
}
