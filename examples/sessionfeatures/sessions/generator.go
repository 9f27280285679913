package sessions

import (
	"fmt"
	"strconv"

	"github.com/stateproc/stateproc/examples/internal/detgen"
)

// Splits is the number of splits of the click source, fixed so that a
// savepoint taken at one parallelism restores at any other.
const Splits = 8

// Shape of the generated clickstream. Every user's clicks fall within
// 3 days (the latest first click) + 59 gaps of under 10 minutes + 4 gaps of
// under 20 hours: under 7 days, the TTL of the category counts, so that no
// entry expires within an input.
const (
	// Epoch is the earliest click, 2026-01-01T00:00:00Z.
	Epoch int64 = 1767225600000
	// ClicksPerUser is the average number of clicks of a user; each pair of
	// users deviates from it in opposite directions by up to half of it.
	ClicksPerUser = 32
	// Categories is the size of the catalog; each user clicks in
	// CategoriesPerUser of them, all of them if the user clicks that often.
	Categories        = 200
	CategoriesPerUser = 20
	MinSessions       = 2
	MaxSessions       = 5

	firstClickWindow = 3 * 24 * 3600_000
	minClickGap      = 10_000
	maxClickGap      = 10*60_000 - 1
	minSessionGap    = 3600_000
	maxSessionGap    = 20*3600_000 - 1
)

// maxClicks bounds a user's clicks: the balancing user of a split (see
// plan) gets at most twice the average.
const maxClicks = 2 * ClicksPerUser

// Independent draws per user.
const (
	fieldPair detgen.Field = iota + 1
	fieldSessions
	fieldFirstClick
	fieldClickGap
	fieldSessionGap
	fieldCatalogOffset
	fieldCatalogStride
	fieldCatalogRotation
	fieldCategory
)

var categoryNames = func() []string {
	names := make([]string, Categories)
	for i := range names {
		names[i] = fmt.Sprintf("cat-%03d", i)
	}
	return names
}()

// strides are the steps coprime with Categories: a user's categories
// offset + i*stride, i < CategoriesPerUser, are then distinct.
var strides = []int64{1, 3, 7, 9, 11, 13, 17, 19, 21, 23, 27, 29, 31, 33, 37, 39}

// plan is the split's shape. User u belongs to split u % Splits as its
// local user u / Splits. Users 0..users-2 of the split come in pairs whose
// click counts add up to twice the average; the last user balances the
// split so that it holds exactly its share of Users*ClicksPerUser clicks.
type plan struct {
	users int64
	// lastClicks is the balancing user's count.
	lastClicks int64
}

func userID(u int64) string { return "u-" + strconv.FormatInt(u, 10) }

func (s *Source) clicksOf(split int, k int64) int64 {
	p := &s.plans[split]
	if k == p.users-1 {
		return p.lastClicks
	}
	first := k &^ 1
	if first+1 >= p.users-1 {
		return ClicksPerUser
	}
	d := int64(detgen.Below(s.seed, uint64(int64(split)+first*Splits), fieldPair, ClicksPerUser/2+1))
	if k == first {
		return ClicksPerUser + d
	}
	return ClicksPerUser - d
}

// user is a user's generated timeline, advanced one click at a time.
type user struct {
	ts       int64
	u        int64
	m        int32 // index of the click at ts
	clicks   int32
	session  int32
	inSess   int32 // index of the click within its session
	sessions int32
}

func (s *Source) firstClick(split int, k int64) user {
	u := int64(split) + k*Splits
	c := s.clicksOf(split, k)
	n := min(MinSessions+int64(detgen.Below(s.seed, uint64(u), fieldSessions, MaxSessions-MinSessions+1)), c)
	return user{u: u, clicks: int32(c), sessions: int32(n),
		ts: Epoch + int64(detgen.Below(s.seed, uint64(u), fieldFirstClick, firstClickWindow))}
}

// sessionLen is the number of clicks of session q: the clicks dealt evenly.
func (us *user) sessionLen(q int32) int32 {
	n := us.clicks / us.sessions
	if q < us.clicks%us.sessions {
		n++
	}
	return n
}

// sub is the index of draw i of user u, for draws made per click or per
// session.
func sub(u int64, i int32) uint64 { return uint64(u)*maxClicks + uint64(i) }

// advance moves to the user's next click; it returns false after the last.
func (s *Source) advance(us *user) bool {
	us.m++
	if us.m >= us.clicks {
		return false
	}
	us.inSess++
	if us.inSess == us.sessionLen(us.session) {
		us.session++
		us.inSess = 0
		us.ts += detgen.Between(s.seed, sub(us.u, us.session), fieldSessionGap, minSessionGap, maxSessionGap)
	} else {
		us.ts += detgen.Between(s.seed, sub(us.u, us.m), fieldClickGap, minClickGap, maxClickGap)
	}
	return true
}

// category returns the category of the user's click m: the user's first
// CategoriesPerUser clicks visit each of the user's categories once, in an
// order of their own; later clicks pick among them at random.
func (s *Source) category(u int64, m int32) string {
	offset := int64(detgen.Below(s.seed, uint64(u), fieldCatalogOffset, Categories))
	stride := strides[detgen.Below(s.seed, uint64(u), fieldCatalogStride, uint64(len(strides)))]
	var i int64
	if m < CategoriesPerUser {
		// 7 is coprime with CategoriesPerUser: a permutation.
		i = (int64(m)*7 + int64(detgen.Below(s.seed, uint64(u), fieldCatalogRotation, CategoriesPerUser))) % CategoriesPerUser
	} else {
		i = int64(detgen.Below(s.seed, sub(u, m), fieldCategory, CategoriesPerUser))
	}
	return categoryNames[(offset+i*stride)%Categories]
}
