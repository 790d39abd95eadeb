package telegramtest_test

import (
	"runtime"
	"time"
)

func runtimeGosched() {
	runtime.Gosched()
	time.Sleep(time.Millisecond)
}
