package httpapi

import (
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
)

// maxBatchPersons bounds the items of one POST /persons/batch.
const maxBatchPersons = 100

// batchResult answers one item of a batch as Upsert Person would have
// answered it alone: its status, and the person or the problem document.
type batchResult struct {
	Status  int                       `json:"status"`
	Person  *personview.CompactPerson `json:"person,omitempty"`
	Problem *problem                  `json:"problem,omitempty"`
}

// upsertPersons runs up to 100 Upsert Person bodies in one store call (one
// transaction, each item in a savepoint), answering 200 with one result per
// item in input order. Each item is decoded and validated as a single upsert
// body is; an item refused at the door is not sent to the store. What makes
// the request itself unusable (not JSON, no items, too many, too large) is
// a request-level problem, and nothing is written.
func (s *Server) upsertPersons(w http.ResponseWriter, r *http.Request) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	var batch struct {
		// Raw items, each decoded on its own so that a bad one is refused
		// alone, with pointers into it.
		Persons []jsontext.Value `json:"persons"`
	}
	if err := decodeMembers("The request body", body, &batch); err != nil {
		return err
	}
	switch n := len(batch.Persons); {
	case n == 0:
		return domain.BodyError("/persons", "persons is required and must hold 1 to %d Upsert Person bodies.", maxBatchPersons)
	case n > maxBatchPersons:
		return domain.BodyError("/persons", "persons may hold at most %d items; got %d. Send the rest in further requests.", maxBatchPersons, n)
	}

	results := make([]batchResult, len(batch.Persons))
	var (
		items []domain.PersonUpsert
		at    []int // the input index of each item sent to the store
	)
	for i, raw := range batch.Persons {
		var in domain.PersonUpsert
		err := DecodeObject(fmt.Sprintf("The item /persons/%d", i), raw, &in)
		if err == nil {
			err = in.Normalize()
		}
		if err != nil {
			if results[i], err = refusedItem(i, err); err != nil {
				return err
			}
			continue
		}
		items, at = append(items, in), append(at, i)
	}
	if len(items) > 0 {
		out, err := s.store.UpsertPersons(r.Context(), accountID(r), items, s.personWrite(r))
		if err != nil {
			return err
		}
		for k, res := range out {
			i := at[k]
			if res.Err != nil {
				if results[i], err = refusedItem(i, res.Err); err != nil {
					return err
				}
				continue
			}
			view := personview.Compact(res.Person)
			results[i] = batchResult{Status: http.StatusOK, Person: &view}
			if res.Created {
				results[i].Status = http.StatusCreated
			}
		}
	}
	return writeJSON(w, http.StatusOK, struct {
		Results []batchResult `json:"results"`
	}{results})
}

// refusedItem is the result of item i that err refused: the problem a
// single upsert would have answered, its pointers moved under
// /persons/<i>. An error that is not a refusal fails the request.
func refusedItem(i int, err error) (batchResult, error) {
	p := problemFor(err)
	if p == nil {
		return batchResult{}, err
	}
	prefix := fmt.Sprintf("/persons/%d", i)
	errs := make([]domain.FieldError, 0, len(p.Errors))
	for _, fe := range p.Errors {
		if fe.Pointer != "" {
			fe.Pointer = prefix + pointerTail(fe.Pointer)
		}
		errs = append(errs, fe)
	}
	if len(errs) == 0 && p.Status == http.StatusBadRequest {
		// A bad item as a whole (not an object): the pointer names it.
		errs = append(errs, domain.FieldError{Pointer: prefix, Detail: p.Detail})
	}
	if len(errs) > 0 {
		p.Errors = errs
	}
	return batchResult{Status: p.Status, Problem: p}, nil
}

// pointerTail is a pointer into an item as it goes after the item's own
// pointer: the item's root ("/", as orRoot writes it) adds nothing.
func pointerTail(ptr string) string {
	if ptr == "/" {
		return ""
	}
	return ptr
}
