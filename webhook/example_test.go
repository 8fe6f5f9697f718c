package webhook_test

import (
	"fmt"
	"time"

	"github.com/cropkit/cropkit/webhook"
)

func ExampleSign() {
	sig, err := webhook.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sig)
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

// A receiver checks every request before trusting its body.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"group":"flanders","field":"f1","data":[]}`)
	sent := time.Now()
	h, _ := webhook.Headers(secret, "msg_0123", sent, body)

	// In an http.Handler: webhook.Verify(secret, r.Header, body, webhook.VerifyOptions{})
	fmt.Println(webhook.Verify(secret, h, body, webhook.VerifyOptions{}))
	fmt.Println(webhook.Verify(secret, h, []byte(`{"forged":true}`), webhook.VerifyOptions{}))
	late := webhook.VerifyOptions{Now: func() time.Time { return sent.Add(time.Hour) }}
	fmt.Println(webhook.Verify(secret, h, body, late) != nil)
	// Output:
	// <nil>
	// verify webhook msg_0123: no matching webhook signature
	// true
}

func ExamplePayload() {
	prevDate := "2019-06-15"
	p := webhook.Payload{
		Group: "flanders",
		Field: "field-12",
		Data: []webhook.Update{{
			Index: "ndvi",
			Date:  webhook.FormatDate(time.Date(2019, 6, 20, 10, 56, 29, 0, time.UTC)),
			Content: webhook.Content{Mean: 0.75, MeanVariation: 50, PreviousDate: &prevDate,
				Median: 0.62, Std: 0.07, Min: 0.21, Max: 0.83, P25: 0.55, P75: 0.66},
		}},
	}
	b, _ := p.Marshal()
	fmt.Println(string(b))
	// Output:
	// {"group":"flanders","field":"field-12","data":[{"index":"ndvi","date":"2019-06-20 10:56:29 GMT","content":{"mean":0.75,"mean_variation":50,"previous_date":"2019-06-15","median":0.62,"std":0.07,"min":0.21,"max":0.83,"p25":0.55,"p75":0.66}}]}
}
