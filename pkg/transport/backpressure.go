package transport

import "go.uber.org/zap"

// backpressure pauses every assigned partition while too many bytes are
// held (bufferedBytes) and resumes them below 80 % of the limit. Pausing
// in librdkafka also drops what it had prefetched for those partitions,
// so reading resumes right after the last message handed out.
func (r *Reader) backpressure() {
	limit := r.cfg.MaxBufferedBytes
	if limit <= 0 || r.deps.Buffer == nil {
		return
	}
	held := r.bufferedBytes()
	switch {
	case !r.paused && held > limit:
		parts, err := r.consumer.Assignment()
		if err != nil {
			r.kafkaError(err)
			return
		}
		if err := r.consumer.Pause(parts); err != nil {
			r.kafkaError(err)
			return
		}
		r.paused = true
		r.metrics.pauses.Inc()
		r.metrics.paused.Set(float64(len(parts)))
		r.logger.Info("buffer full; pausing partitions", zap.Int64("bufferedBytes", held), zap.Int64("limit", limit), zap.Int("partitions", len(parts)))
	case r.paused && held < limit/10*8:
		parts, err := r.consumer.Assignment()
		if err != nil {
			r.kafkaError(err)
			return
		}
		if err := r.consumer.Resume(parts); err != nil {
			r.kafkaError(err)
			return
		}
		r.paused = false
		r.metrics.resumes.Inc()
		r.metrics.paused.Set(0)
		r.logger.Info("buffer drained; resuming partitions", zap.Int64("bufferedBytes", held), zap.Int("partitions", len(parts)))
	}
}

// bufferedBytes is what --max-buffered-bytes bounds: the bytes the
// bundles held downstream keep (Deps.Buffer), what the messages polled and
// not yet decoded will, and the chunks of the events being assembled
// (Assembler).
func (r *Reader) bufferedBytes() int64 {
	var n int64
	if r.deps.Buffer != nil {
		n = r.deps.Buffer.HeldBytes()
	}
	return n + r.queuedBytes.Load() + r.chunkBytes()
}
