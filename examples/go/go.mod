module example.com/petstore-client/mockstoretest

go 1.19
