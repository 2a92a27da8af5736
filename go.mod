module github.com/mynah-tts/mynah

go 1.26.0

require (
	github.com/gordonklaus/portaudio v0.0.0-20250206071425-98a94950218b // indirect
	github.com/mozillazg/go-pinyin v0.21.0 // indirect
	github.com/yalue/onnxruntime_go v1.27.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
