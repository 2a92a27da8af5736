module github.com/mynah-tts/mynah

go 1.26.0

require (
	github.com/gordonklaus/portaudio v0.0.0-20250206071425-98a94950218b
	github.com/mozillazg/go-pinyin v0.21.0
	github.com/yalue/onnxruntime_go v1.27.0
	golang.org/x/text v0.44.0
	google.golang.org/protobuf v1.36.12
)
