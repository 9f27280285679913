package sessions

// UserClicks returns user u's clicks in time order, computed from the
// generator alone.
func (s *Source) UserClicks(u int64) []Click {
	split, k := int(u%Splits), u/Splits
	us := s.firstClick(split, k)
	var out []Click
	for {
		out = append(out, Click{UserID: userID(u), Category: s.category(u, us.m), TS: us.ts})
		if !s.advance(&us) {
			return out
		}
	}
}

// ExpectedSummaries computes, from the generator alone, every session the
// input holds, as the job emits them when it drains at the end.
func (s *Source) ExpectedSummaries() []SessionSummary {
	var out []SessionSummary
	for split := range s.plans {
		for k := int64(0); k < s.plans[split].users; k++ {
			us := s.firstClick(split, k)
			cur := SessionSummary{UserID: userID(us.u), StartTS: us.ts}
			for {
				cur.LastTS = us.ts
				cur.Clicks++
				session := us.session
				more := s.advance(&us)
				if !more || us.session != session {
					out = append(out, cur)
					cur = SessionSummary{UserID: cur.UserID, StartTS: us.ts}
				}
				if !more {
					break
				}
			}
		}
	}
	return out
}
