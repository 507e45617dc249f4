package client_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/pds-dev/pds/pkg/client"
)

// Upsert a person by its external id and tell what happened.
func Example() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses("http://localhost:8080", client.WithKey(os.Getenv("PDS_KEY")))
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{
		ExternalID:   client.Set("crm-1"),
		Email:        client.Set("ada@example.com"),
		Phone:        client.Null[string](), // clears the phone; an unset member is left as it is
		CustomFields: client.Set(client.CustomFieldInput{"score": client.Int(5), "interests": client.List("maths")}),
	})
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case res.JSON201 != nil:
		fmt.Println("created", res.JSON201.ID)
	case res.JSON200 != nil:
		fmt.Println("matched", res.JSON200.ID)
	case res.ApplicationProblemJSON409 != nil:
		fmt.Println("the email is held by", *res.ApplicationProblemJSON409.ExistingID)
	case res.ApplicationProblemJSON400 != nil:
		for _, e := range res.ApplicationProblemJSON400.Errors {
			fmt.Println(*e.Pointer, e.Detail)
		}
	default:
		fmt.Println(res.Status(), string(res.Body))
	}
}
