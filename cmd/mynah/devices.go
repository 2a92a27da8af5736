package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mynah-tts/mynah/audio/portaudio"
)

func runDevices(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return usageError("devices takes no arguments")
	}
	devs, err := portaudio.ListDevices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		fmt.Fprintln(stderr, "no audio output devices found (mynah say will write a WAV file instead)")
		return nil
	}
	for _, d := range devs {
		mark := " "
		if d.Default {
			mark = "*"
		}
		fmt.Fprintf(stdout, "%s %-40s %-12s %d ch, %d Hz\n", mark, d.Name, d.HostAPI, d.MaxOutputChannels, d.DefaultRate)
	}
	return nil
}
