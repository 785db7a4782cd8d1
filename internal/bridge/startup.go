package bridge

import (
	"context"

	"go.uber.org/zap"

	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/pkg/transport"
)

// startup runs the start-up steps Config.Startup turns on, one after the
// other, before the bridge reads (the database is migrated by then: New
// did it). A failing step is logged, not fatal: the steps are
// conveniences (a resync the agents' next changes would make anyway), not
// conditions of reading.
func (b *Bridge) startup(ctx context.Context) {
	set, err := profiles.Parse(b.cfg.Profiles)
	if err != nil {
		return // Validate refused it in New
	}
	steps, err := set.Startup(b.cfg.Startup)
	if err != nil {
		return // likewise
	}
	for _, st := range steps {
		logger := b.logger.With(zap.String("profile", st.Profile), zap.String("step", st.Flag))
		fields, err := st.Run(ctx, profile.StartupEnv{Value: st.Value, DatabaseURL: b.cfg.DatabaseURL,
			Kafka:  transport.PublisherConfig{Brokers: b.cfg.Reader.Brokers, Properties: b.cfg.Reader.Properties},
			Logger: logger})
		if err != nil {
			logger.Warn("start-up step failed", zap.Error(err))
			continue
		}
		logger.Info("start-up step done", fields...)
	}
}
