package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// AppendBreadcrumb stores a breadcrumb and moves its person's last-seen
// time, creating the person when its identifiers match nobody; all in the
// person write path, so a created person opens a person.created burst.
func (s *Store) AppendBreadcrumb(ctx context.Context, accountID string, in domain.BreadcrumbInput, w store.Write) (_ domain.Breadcrumb, _ bool, err error) {
	defer named("AppendBreadcrumb", &err)
	if err := in.NormalizeIdentifiers(); err != nil {
		return domain.Breadcrumb{}, false, err
	}
	s.warmSecret(ctx, accountID, w)
	if b, ok, err := s.dialect.Appends.toHolder(ctx, s, accountID, in, w); err != nil || ok {
		return inMillis(b), false, err
	}
	var (
		b        domain.Breadcrumb
		replayed bool
	)
	_, _, err = s.changePerson(ctx, personWrite{accountID: accountID, w: w, apply: func(q querier) (string, change, error) {
		replayed = false
		if err := mustExist(ctx, q, "campaigns", "campaign", accountID, in.CampaignID); err != nil {
			return "", 0, err
		}
		if err := mustExist(ctx, q, "projects", "project", accountID, in.ProjectID); err != nil {
			return "", 0, err
		}
		personID, c, err := breadcrumbPerson(ctx, q, accountID, in, w)
		if err != nil {
			return "", 0, err
		}
		b = newBreadcrumb(accountID, in, w)
		b.PersonID = personID
		if in.ID != "" {
			// A replay overwrites the record but keeps when it was first made.
			var created int64
			err := q.queryRow(ctx, `SELECT created_at FROM breadcrumbs WHERE account_id = $1 AND id = $2`, accountID, b.ID).Scan(&created)
			switch {
			case err == nil:
				replayed, b.CreatedAt = true, domain.FromMillis(created)
				if b.OccurredAt == nil {
					b.ActivityAt = b.CreatedAt
				}
			case !errors.Is(err, sql.ErrNoRows):
				return "", 0, err
			}
		}
		if replayed {
			_, err = q.exec(ctx, `UPDATE breadcrumbs SET flavor = $1, person_id = $2, campaign_id = $3, project_id = $4,
				email = $5, external_id = $6, f_id = $7, occurred_at = $8, activity_at = $9 WHERE account_id = $10 AND id = $11`,
				b.Flavor, b.PersonID, nullable(b.CampaignID), nullable(b.ProjectID), nullable(b.Email), nullable(b.ExternalID),
				nullable(b.FID), nullMillis(b.OccurredAt), b.ActivityAt.UnixMilli(), accountID, b.ID)
			return personID, c, err
		}
		// A plain INSERT: a concurrent first delivery of the same key that
		// committed meanwhile makes this a unique violation, and changePerson
		// retries, finding that record and replaying onto it.
		_, err = q.exec(ctx, `INSERT INTO breadcrumbs (`+breadcrumbColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			b.ID, accountID, b.Flavor, b.PersonID, nullable(b.CampaignID), nullable(b.ProjectID),
			nullable(b.Email), nullable(b.ExternalID), nullable(b.FID), nullMillis(b.OccurredAt),
			b.ActivityAt.UnixMilli(), b.CreatedAt.UnixMilli())
		return personID, c, err
	}})
	if err != nil {
		return domain.Breadcrumb{}, false, err
	}
	return inMillis(b), replayed, nil
}

// newBreadcrumb is the record a new breadcrumb is stored as, but for its
// person: its id (in's own, or a new one), made now, active when it
// occurred, else now.
func newBreadcrumb(accountID string, in domain.BreadcrumbInput, w store.Write) domain.Breadcrumb {
	b := domain.Breadcrumb{
		ID: in.ID, AccountID: accountID, Flavor: in.Flavor,
		CampaignID: in.CampaignID, ProjectID: in.ProjectID, Email: in.Email, ExternalID: in.ExternalID, FID: in.FID,
		OccurredAt: in.OccurredAt, CreatedAt: w.Now, ActivityAt: w.Now,
	}
	if b.ID == "" {
		b.ID = domain.NewID(domain.BreadcrumbIDPrefix)
	}
	if b.OccurredAt != nil {
		b.ActivityAt = *b.OccurredAt
	}
	return b
}

// inMillis gives b's times as stored, in whole milliseconds.
func inMillis(b domain.Breadcrumb) domain.Breadcrumb {
	b.CreatedAt, b.ActivityAt = domain.FromMillis(b.CreatedAt.UnixMilli()), domain.FromMillis(b.ActivityAt.UnixMilli())
	if b.OccurredAt != nil {
		t := domain.FromMillis(b.OccurredAt.UnixMilli())
		b.OccurredAt = &t
	}
	return b
}

// breadcrumbPerson loads what the references of a checked breadcrumb name
// (service.CheckBreadcrumbRefs): the person of person_id, else the holders
// of its identifiers, which service.MatchOrCreate resolves to a person;
// either way whether an identifier it names is suppressed, which refuses
// it (see holdersAndSuppressed).
func breadcrumbPerson(ctx context.Context, q querier, accountID string, in domain.BreadcrumbInput, w store.Write) (string, change, error) {
	if in.PersonID != nil {
		personID := *in.PersonID
		err := lockPerson(ctx, q, accountID, personID)
		var merged *domain.MergedError
		if errors.As(err, &merged) {
			// A breadcrumb naming a merged id is the survivor's.
			personID = merged.MergedInto
			err = lockPerson(ctx, q, accountID, personID)
		}
		if err != nil {
			return "", 0, err
		}
		return personID, seenOnly, q.s.refuseSuppressed(ctx, q, accountID, breadcrumbValues(in))
	}
	ids := in.Identifiers()
	holders, err := holdersAndSuppressed(ctx, q, accountID, ids, breadcrumbValues(in))
	if err != nil {
		return "", 0, err
	}
	target := service.MatchOrCreate(ids, holders)
	if !target.Create && q.s.dialect.LockPerson == "" {
		// Its holder was read in this transaction, which runs alone on
		// such an engine (SQLite's one writer): nothing erased it since,
		// and a second read of its row (the one writer's time, a B-tree
		// descent into a random page) would only find it again.
		return target.ID, seenOnly, nil
	}
	if !target.Create {
		err := lockPerson(ctx, q, accountID, target.ID)
		if errors.Is(err, domain.ErrNotFound) {
			// Its holder was erased after the look-up: run again, to match
			// or create afresh.
			err = errPersonErased
		}
		return target.ID, seenOnly, err
	}
	id := domain.NewID(domain.PersonIDPrefix)
	return id, createdNew, insertPerson(ctx, q, accountID, id, attributes{Identifiers: ids}, w)
}

// mustExist checks that an optional reference names a row of the account.
func mustExist(ctx context.Context, q querier, table, kind, accountID string, id *string) error {
	if id == nil {
		return nil
	}
	var one int
	err := q.queryRow(ctx, `SELECT 1 FROM `+table+` WHERE account_id = $1 AND id = $2`, accountID, *id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.NotFound(kind, *id)
	}
	return err
}

// breadcrumbColumns are a breadcrumb's columns, in the order its reads scan
// and its inserts write them.
const breadcrumbColumns = `id, account_id, flavor, person_id, campaign_id, project_id, email, external_id, f_id,
	occurred_at, activity_at, created_at`

// ListBreadcrumbs returns a page of breadcrumbs, newest activity first.
func (s *Store) ListBreadcrumbs(ctx context.Context, accountID string, f domain.BreadcrumbFilter, p domain.PageRequest) (out []domain.Breadcrumb, total int, err error) {
	defer named("ListBreadcrumbs", &err)
	if f.PersonID == nil && f.CampaignID == nil && f.ProjectID == nil {
		err = s.safeReadTx(ctx, func(q querier) error {
			out, total, err = breadcrumbTimeline(ctx, q, accountID, f, p)
			return err
		})
		return out, total, err
	}
	// A person's breadcrumbs are few; a campaign's or a project's are
	// counted row by row.
	var args sqlArgs
	where := `account_id = ` + args.add(accountID)
	for _, eq := range []struct {
		column string
		value  *string
	}{{"flavor", f.Flavor}, {"person_id", f.PersonID}, {"campaign_id", f.CampaignID}, {"project_id", f.ProjectID}} {
		if eq.value != nil {
			where += ` AND ` + eq.column + ` = ` + args.add(*eq.value)
		}
	}
	if f.Since != nil {
		where += ` AND activity_at >= ` + args.add(ceilMillis(*f.Since))
	}
	if f.Until != nil {
		where += ` AND activity_at <= ` + args.add(f.Until.UnixMilli())
	}
	return safePage(ctx, s, func(q querier) ([]domain.Breadcrumb, int, error) {
		return listPage(ctx, q, breadcrumbColumns, `breadcrumbs WHERE `+where, `activity_at DESC, id DESC`, args, p, scanBreadcrumb)
	})
}

// breadcrumbTimeline reads a page of the account's breadcrumbs, or those
// of one flavor, between since and until, newest first, counted and located
// through the account's breadcrumb timelines.
func breadcrumbTimeline(ctx context.Context, q querier, accountID string, f domain.BreadcrumbFilter, p domain.PageRequest) ([]domain.Breadcrumb, int, error) {
	var flavor sqlArgs
	account := flavor.add(accountID)
	where := `account_id = ` + account
	if f.Flavor != nil {
		where += ` AND flavor = ` + flavor.add(*f.Flavor)
	}
	r := timelineRange{tl: breadcrumbsTimeline(accountID, f.Flavor), lo: timelineMin, hi: timelineMax}
	if f.Since != nil {
		r.lo = ceilMillis(*f.Since)
	}
	if f.Until != nil {
		r.hi = f.Until.UnixMilli() + 1
	}
	return timelinePage(ctx, q, r, true, p, func(pos position, limit int) ([]domain.Breadcrumb, error) {
		args := append(sqlArgs(nil), flavor...)
		return queryAll(ctx, q, scanBreadcrumb, `SELECT `+breadcrumbColumns+` FROM breadcrumbs WHERE `+where+
			` AND activity_at >= `+args.add(r.lo)+` AND activity_at < `+args.add(pos.bound)+
			` ORDER BY activity_at DESC, id DESC LIMIT `+args.add(limit)+` OFFSET `+args.add(pos.skip), args...)
	})
}

func scanBreadcrumb(sc scanner) (domain.Breadcrumb, error) {
	var (
		b                                  domain.Breadcrumb
		campaign, project, email, ext, fid sql.NullString
		occurred                           sql.NullInt64
		activity, created                  int64
	)
	if err := sc.Scan(&b.ID, &b.AccountID, &b.Flavor, &b.PersonID, &campaign, &project, &email, &ext, &fid,
		&occurred, &activity, &created); err != nil {
		return b, err
	}
	b.CampaignID, b.ProjectID, b.Email, b.ExternalID, b.FID = strPtr(campaign), strPtr(project), strPtr(email), strPtr(ext), strPtr(fid)
	b.OccurredAt, b.ActivityAt, b.CreatedAt = timePtr(occurred), domain.FromMillis(activity), domain.FromMillis(created)
	return b, nil
}
