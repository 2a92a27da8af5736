package daemon

import "errors"

// AudioChanged tells the daemon that the audio device was lost or is
// back (mynahd's reopening sink calls it): a lost device is a warning
// event audio_unavailable, and the state says so either way. While the
// device is gone, the sink fails writes at once and requests fail with
// reason audio.
func (d *Daemon) AudioChanged(st AudioStatus) {
	if st.Available {
		d.log.Info("audio device back")
	} else {
		d.Warn(ReasonAudioUnavailable, errors.New(st.Error))
	}
	d.markState()
}
