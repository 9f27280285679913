package storetest

import "context"

type cutKey struct{}

func withCut(ctx context.Context, after int64) context.Context {
	return context.WithValue(ctx, cutKey{}, after)
}

func cutOf(ctx context.Context) (int64, bool) {
	v, ok := ctx.Value(cutKey{}).(int64)
	return v, ok
}
